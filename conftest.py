"""Repository-local pytest setup.

The ndval plugin itself is loaded through the ``pytest11`` entry point (``ndval.harness.plugin``); when
plugin autoloading is disabled (``PYTEST_DISABLE_PLUGIN_AUTOLOAD``) it is registered here instead.
``pytester`` (used by the harness tests in tests/harness) must be enabled in the top-level
conftest: pytest rejects ``pytest_plugins`` in nested conftest files.
"""

import os

pytest_plugins = ["pytester"]
if os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
    pytest_plugins.append("ndval.harness.plugin")
