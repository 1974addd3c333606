"""kuberay_py: a controller-runtime-style framework for Kubernetes operators on asyncio.

It knows nothing about Ray; the Ray controllers live in the ``controllers`` package.
"""
