"""Mirrors of KubeRay v1.7.0 e2e tests (ray-operator/test/e2e) on envtest + the simulator."""
