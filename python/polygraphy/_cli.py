"""The `polygraphy` command of a wheel (scripts/build_wheel.sh): runs the CLI program the wheel
carries in polygraphy/_libs/bin, which finds the wheel's libpolygraphy beside it."""
import os
import sys


def main():
    program = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_libs", "bin", "polygraphy")
    if not os.access(program, os.X_OK):
        sys.stderr.write(
            "[!] This polygraphy package carries no command-line program (only its wheel does): "
            "run bin/polygraphy of the build or install instead\n"
        )
        return 1
    os.execv(program, [program] + sys.argv[1:])
    return 1  # not reached: execv replaces the process or raises OSError
