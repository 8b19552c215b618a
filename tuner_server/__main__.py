"""`python -m tuner_server`: the same as `tunefarm server`."""
import sys

from tuner_server.main import main

sys.exit(main())
