"""``python -m tooljig ...``: the ``tooljig`` command line."""

from tooljig._cli import main

if __name__ == "__main__":
    main()
