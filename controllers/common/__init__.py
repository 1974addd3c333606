"""What every controller shares: objects, conditions, events, cache reads and Pod readiness.

Each module has one job and no controller imports another controller's helpers for these: the
RayCluster, RayService and RayJob controllers all read the same rules from here.

* :mod:`.objects` -- ``Obj`` and the small accessors (key, labels, annotations, deletion).
* :mod:`.conditions` -- ``Condition`` and apimachinery's ``meta.SetStatusCondition`` rules.
* :mod:`.events` -- the ``Recorder`` protocol and :func:`~.events.write_with_events`.
* :mod:`.cache` -- the ``CacheReader`` protocol the reconcilers read through.
* :mod:`.pods` -- the slimmed cached Pod's shape and the one Pod readiness rule.
* :mod:`.ray_version` -- the one ``rayVersion`` parser and comparison every feature gate uses.
* :mod:`.finalizers` -- the body of KubeRay's typed whole-object Update that adds/removes a finalizer.
"""
