from analysis.report.cli import main

raise SystemExit(main())
