"""`python -m parity` = the `parity` command."""
from .cli import main

main(prog_name="parity")
