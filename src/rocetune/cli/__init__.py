"""Command-line interface: a parser, one module per verb, one renderer for results."""
