"""The RayCluster controller: pure builders (Pods, Services, Ingress, RBAC, Jobs), status, reconciler."""
