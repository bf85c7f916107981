"""The `parity` command: click commands only; `main.py` holds the group and registers the others."""
