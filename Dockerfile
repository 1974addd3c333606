# syntax=docker/dockerfile:1
# Multi-stage: build a wheel and resolve dependencies against the pinned constraints in a builder,
# then copy only the installed virtualenv into a slim runtime image that runs as a non-root user.

FROM python:3.11-slim-bookworm AS builder
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
COPY .ci/constraints.txt /src/.ci/constraints.txt
COPY pyproject.toml README.md /src/
COPY kuberay_py /src/kuberay_py
COPY controllers /src/controllers
RUN pip install --no-compile -c /src/.ci/constraints.txt /src

FROM python:3.11-slim-bookworm AS runtime
LABEL org.opencontainers.image.title="kuberay-py" \
      org.opencontainers.image.description="Kubernetes operator for Ray (ray.io/v1), Python/asyncio" \
      org.opencontainers.image.licenses="Apache-2.0"
ENV PATH=/opt/venv/bin:$PATH PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
COPY --from=builder /opt/venv /opt/venv
# KubeRay's Helm chart and kustomize manifests run `command: [/manager]` with the operator's flags
# as args (no subcommand): /manager is the console script, whose default command is `run`.
RUN ln -s /opt/venv/bin/kuberay-operator /manager
USER 65532:65532
EXPOSE 8080 8082
ENTRYPOINT ["kuberay-operator"]
CMD ["run"]
