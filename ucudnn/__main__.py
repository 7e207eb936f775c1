"""`python -m ucudnn ...` runs the `ucudnn` command."""

import sys

from ucudnn.faces.cli import main

sys.exit(main())
