import sys

try:
    from .cli import main
except KeyboardInterrupt:       # Ctrl-C while the modules load: one line, as main() says it
    print("commitsched: interrupted", file=sys.stderr)
    sys.exit(130)

sys.exit(main())
