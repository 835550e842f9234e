#!/usr/bin/env bash
# Sets up <repo>/.venv and the extension (setup.sh), and runs the pytest suite; then again
# under CPython 3.12 or later when this machine has one (eager handler tasks).
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
if [ $status != 0 ]; then
  exit $status
fi

# Handler tasks start eagerly on Python 3.12 and later (src/task.rs), so the suite runs again
# under the newest such CPython this machine has (a pyenv install counts, active or not), in
# a venv of its own that imports the extension just built (it is abi3). None: said, not failed.
newer=""
for candidate in python3.12 python3.13 python3.14 "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[2-9]*/bin/python3; do
  if "$candidate" -c 'import sys; assert sys.version_info >= (3, 12)' >/dev/null 2>&1; then
    newer="$candidate"
  fi
done
if [ -z "$newer" ]; then
  echo "== no CPython 3.12 or later here: eager handler tasks are not tested"
  exit 0
fi
venv="$(cd "$here/.." && pwd)/.venv-newer"
if [ ! -x "$venv/bin/python" ] || ! cmp -s "$here/requirements-test.txt" "$venv/.tooljig-test-requirements"; then
  rm -rf "$venv"
  "$newer" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/requirements-test.txt"
  cp "$here/requirements-test.txt" "$venv/.tooljig-test-requirements"
fi
"$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))' |
  { read -r site; echo "$here/python" > "$site/tooljig-dev.pth"; }
echo "== pytest again under $("$venv/bin/python" -V)"
"$venv/bin/python" -m pytest tests -q -ra --color=no -p no:cacheprovider "$@"
