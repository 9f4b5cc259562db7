"""The ``callboard`` command line: thin commands over a Client."""
