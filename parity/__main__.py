"""`python -m parity` = the `parity` command."""
from parity.cli.main import main

main(prog_name="parity")
