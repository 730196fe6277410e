import sys

from poolbench_data.cli import main

sys.exit(main())
