"""The one name for an API object as the framework and the controllers pass it around.

Objects travel as the plain dicts the API server's JSON decodes to (orjson), never as generated
models: that is what list and watch paths can afford. Where a shape is a contract between modules
it gets a TypedDict next to the code that owns it; everything else is an ``Obj``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Obj"]

Obj = dict[str, Any]
