"""`python -m stet ARGS` runs the `stet` command installed beside this Python."""
import os
import sys
import sysconfig


def main() -> int:
    exe = os.path.join(sysconfig.get_path("scripts"), "stet")
    if not os.path.exists(exe):
        print(f"stet: the stet command is not installed at {exe}", file=sys.stderr)
        return 1
    os.execv(exe, [exe] + sys.argv[1:])
    return 1


if __name__ == "__main__":
    sys.exit(main())
