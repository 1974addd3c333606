"""The kit every controller shares; no controller package imports another (tests enforce it).

Each module has one job: the RayCluster, RayService, RayJob and RayCronJob controllers all read
the same rules from here.

* :mod:`.objects` -- ``Obj`` and the small accessors (key, labels, annotations, deletion).
* :mod:`.conditions` -- ``Condition`` and apimachinery's ``meta.SetStatusCondition`` rules.
* :mod:`.events` -- the ``Recorder`` protocol and :func:`~.events.write_with_events`.
* :mod:`.cache` -- the ``CacheReader`` protocol the reconcilers read through.
* :mod:`.pods` -- the slimmed cached Pod's shape and the one Pod readiness rule.
* :mod:`.ray_version` -- the one ``rayVersion`` parser and comparison every feature gate uses.
* :mod:`.finalizers` -- the body of KubeRay's typed whole-object Update that adds/removes a finalizer.
* :mod:`.heads` -- a cluster's head Pod and how to reach its dashboard and proxy.
* :mod:`.cluster` -- the readers over a RayCluster (names, ports, switches, significant status).
* :mod:`.head_service` -- the head Service builder (the RayCluster's and, renamed, the RayService's).
* :mod:`.owned_cluster` -- the RayCluster body a RayService or RayJob creates.
* :mod:`.names` -- KubeRay's ``<prefix>-<5 random characters>`` name generator.
* :mod:`.dashboards` -- closing a controller's dashboard connection pool with its manager.
* :mod:`.last_write` -- our last write of an object, read until the cache shows it.
* :mod:`.requeue` -- the one wake-up timer of a reconcile (earliest delay, or at once).
* :mod:`.invalid` -- KubeRay's ``Invalid<Kind><Category>`` event reason.
* :mod:`.predicates` -- which changes of a controller's own object are worth a reconcile.
"""
