"""Subcommands of `charon`; each module has `register(app)`."""
