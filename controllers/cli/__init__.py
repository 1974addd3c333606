"""The ``kuberay-operator`` command: ``run`` (in-cluster operator), ``demo`` and ``crds``."""
