import sys

from analysis.report.cli import main

sys.exit(main())
