"""Subcommands of the ``joiner`` command line (see ``joiner.cli``)."""
