"""`python -m parity` = the `parity` command."""
from parity.cli import main

main(prog_name="parity")
