#!/usr/bin/env python
"""Django's command line; prefer `brain manage ...`, which also starts the embedded database."""

import sys

if __name__ == "__main__":
    from brain.cli import main

    sys.exit(main(["manage", *sys.argv[1:]]))
