import sys

from tunefarm_cli import main

sys.exit(main())
