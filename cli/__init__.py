"""The command-line shell of opcost: parse, call the library, render, map errors to exit codes."""
