"""The ``switchboard`` command line: thin commands over a Client."""
