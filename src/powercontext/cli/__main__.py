"""`python -m powercontext.cli` is the `powercontext` command."""

from powercontext.cli import main

main()
