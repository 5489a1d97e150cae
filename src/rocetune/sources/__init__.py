"""Sources: each reads one aspect of the host and fills part of the Features document."""
