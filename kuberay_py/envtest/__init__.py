"""envtest for kuberay_py: a Kubernetes API server for integration tests.

``Environment`` starts real etcd + kube-apiserver when ``KUBEBUILDER_ASSETS`` names them, or the
built-in in-process server otherwise; ``kuberay_py.envtest.pytest_plugin`` provides the
``envtest`` / ``k8s`` / ``namespace`` fixtures; ``python -m kuberay_py.envtest`` serves the
built-in server for kubectl.
"""

from .apiserver import BuiltinAPIServer
from .environment import Environment, uses_real_apiserver
from .webhooks import WebhookInstallOptions

__all__ = ["BuiltinAPIServer", "Environment", "WebhookInstallOptions", "uses_real_apiserver"]
