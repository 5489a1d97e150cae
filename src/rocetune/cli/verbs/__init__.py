"""One module per verb. Each defines NAME, ORDER, HELP, register(parser) and run(args) -> Result."""
