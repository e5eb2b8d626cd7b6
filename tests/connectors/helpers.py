"""Shared set-up for the connector tests: the package and the native module on sys.path, and
the live servers of tests/compat/lmcache/servers.py (larder-server, and redis-server 7 as the
server without LARDER.PREFIX)."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "connectors", "python"))
sys.path.insert(0, os.path.join(ROOT, "tests", "compat", "lmcache"))
if os.environ.get("LARDER_NATIVE_DIR"):
    sys.path.insert(0, os.environ["LARDER_NATIVE_DIR"])

from servers import SERVERS, MiB  # noqa: E402,F401
