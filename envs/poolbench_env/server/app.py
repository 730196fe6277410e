"""The ASGI app openenv.yaml names (`server.app:app`): PoolBench's OpenEnv server, rl.server.make_app, for any
interface (a container's), so without the loopback Host check; `poolbench serve-env` builds the same app.

    uvicorn server.app:app --host 0.0.0.0 --port 8000 --ws-max-size 1048576   # the image's command
    python -m server.app --host 0.0.0.0 --port 8000                           # the same through serve-env
"""

import sys

from poolbench_data.rl.server import make_app

app = make_app()


def main(argv=None) -> int:
    from poolbench_data.cli import main as poolbench

    return poolbench(["serve-env", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
