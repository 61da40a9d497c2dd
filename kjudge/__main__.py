import sys

from kjudge.cli import main

sys.exit(main())
