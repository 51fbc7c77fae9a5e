"""`python -m envcheck` runs the same CLI as the console script."""

from envcheck.cli import main

if __name__ == "__main__":
    main()
