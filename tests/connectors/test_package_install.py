"""The `larder` Python package installs with pip from the source tree, with no registry
(--no-index; its one dependency, redis-py, comes from Debian's python3-redis), and the installed
copy is the one that imports. The tree is copied first so the build leaves nothing in it."""
import os
import shutil
import subprocess
import tempfile
import unittest

import helpers

PYTHON = "/usr/bin/python3"


class PackageInstallTest(unittest.TestCase):
    def test_pip_installs_from_the_source_tree_without_a_registry(self):
        with tempfile.TemporaryDirectory() as tmp:
            src = shutil.copytree(
                os.path.join(helpers.ROOT, "connectors", "python"), os.path.join(tmp, "src"),
                ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
            site = os.path.join(tmp, "site")
            env = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1")
            subprocess.run([PYTHON, "-m", "pip", "install", "--no-index", "--no-build-isolation",
                            "--no-deps", "--target", site, src],
                           check=True, env=env, capture_output=True)
            probe = ("import larder; from larder import Client, AsyncClient, parse_url; "
                     "from larder.lmcache_connector import LarderConnectorAdapter; "
                     "print(larder.__file__)")
            out = subprocess.run([PYTHON, "-c", probe], check=True, cwd=tmp, capture_output=True,
                                 text=True, env=dict(env, PYTHONPATH=site)).stdout.strip()
            self.assertTrue(out.startswith(site), out)
            self.assertTrue(os.path.isdir(os.path.join(site, "larder-0.1.0.dist-info")))


if __name__ == "__main__":
    unittest.main()
