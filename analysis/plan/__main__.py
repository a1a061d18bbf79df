import sys

from analysis.plan.cli import main

sys.exit(main())
