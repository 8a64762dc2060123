"""Request handlers: one module per API family, each a thin async function from request to response.

Importing this package imports every module in it, which registers each handler (see _common/registry.py).
"""

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
