"""The RayCluster and RayService controllers, compatible with KubeRay's ray.io/v1 API."""
