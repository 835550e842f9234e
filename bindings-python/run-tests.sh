#!/usr/bin/env bash
# Sets up <repo>/.venv and the extension (setup.sh), and runs the pytest suite.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bash "$here/setup.sh"
py="$(cd "$here/.." && pwd)/.venv/bin/python"

cd "$here"
set +e
"$py" -m pytest tests -q -ra --color=no -p no:cacheprovider "$@"
status=$?
set -e
# pytest exits 5 when it collected nothing: that is a failure here, not a pass.
exit $status
