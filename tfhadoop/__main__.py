from tfhadoop.cli import main

raise SystemExit(main())
