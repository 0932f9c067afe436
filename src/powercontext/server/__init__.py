"""The HTTP v1 server: the only package that imports FastAPI.

from powercontext.server import create_app
app = create_app(ServerSettings())   # serve with any ASGI server, or `powercontext server run`
"""

from powercontext.server.app import PowerContextApp, RuntimeFactory, create_app
from powercontext.server.runner import serve

__all__ = ["PowerContextApp", "RuntimeFactory", "create_app", "serve"]
