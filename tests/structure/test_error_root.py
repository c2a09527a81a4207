"""One error root: every exception class the service defines is a ``BureauError``."""

from __future__ import annotations

import importlib
import inspect

from bureau.errors import BureauError
from tests.structure.test_import_cycles import modules


def test_every_exception_class_in_bureau_is_a_bureau_error() -> None:
    found = []
    for name in modules():
        if not name.startswith("bureau"):
            continue
        module = importlib.import_module(name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == name and issubclass(cls, BaseException):
                found.append(cls)
                assert issubclass(cls, BureauError), f"{name}.{cls.__name__}"
    assert {c.__name__ for c in found} >= {"BureauError", "BadEntry", "ShardFailed",
                                           "NotJSON", "RequestError"}
