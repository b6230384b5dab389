"""
The SDK's FluxOperator helpers on a MiniCluster of size 2 that this operator runs, made with the
SDK's models through the recipe. Usage:

  operator_helpers.py kwok NAMESPACE NAME
      pods kept Running by KWOK: creates it, then wait_pods, get_broker_pod and
      FluxBrokerMiniCluster.load
  operator_helpers.py real NAMESPACE NAME APP_IMAGE VIEW_IMAGE NODE_LABEL
      Flux on real nodes: also kubectl_exec (`flux resource list` in the lead broker, until both
      brokers are free), FluxBrokerMiniCluster.execute of the same, and stream_output of the lead
      broker's log to its end
  operator_helpers.py delete NAMESPACE NAME
      delete_minicluster, which returns once the pods are gone

Creating and deleting are separate runs so that the test reads the pods in between.

The lead broker's script prints `flux resource list`, then waits for /tmp/sdk-done, which
kubectl_exec creates, so that the log streamed afterwards ends with the broker.

Prints one JSON line with what each helper returned.
"""

import json
import sys
import tempfile
import time

import fluxoperator.models as models
from fluxoperator.client import FluxBrokerMiniCluster, FluxOperator
from kubernetes import client, config
from kubernetes.client import V1ObjectMeta

import recipe

mode, namespace, name = sys.argv[1:4]
config.load_kube_config()
crd_api = client.CustomObjectsApi()
operator = FluxOperator(namespace=namespace)

if mode == "delete":
    t0 = time.monotonic()
    operator.delete_minicluster(name=name, crd_api=crd_api)
    print(json.dumps({"deleted_seconds": round(time.monotonic() - t0, 1)}))
    sys.exit(0)

LEAD_SCRIPT = "\n".join(
    [
        "flux resource list",
        "echo waiting-for-sdk",
        "until [ -e /tmp/sdk-done ]; do sleep 1; done",
        "echo sdk-done",
    ]
)
# What FluxBrokerMiniCluster.execute sends: the view's environment, then the lead broker's socket.
ON_LEAD_BROKER = ". /mnt/flux/flux-view.sh && flux proxy $fluxsocket "

if mode == "kwok":
    container = models.MiniClusterContainer(command="hostname")
    flux = models.FluxSpec()
    pod = models.PodSpec(annotations={"kwok.x-k8s.io/keep-running": "true"})
    extra = {}
else:
    app_image, view_image, node_label = sys.argv[4:7]
    container = models.MiniClusterContainer(
        image=app_image,
        launcher=True,
        commands=models.Commands(script=LEAD_SCRIPT),
    )
    flux = models.FluxSpec(container=models.FluxContainer(image=view_image))
    pod = models.PodSpec(node_selector={node_label: "true"})
    # The SDK's PodSpec has no tolerations: the real nodes' taint is tolerated in the dict.
    extra = {
        "pod": {
            "tolerations": [{"key": node_label, "operator": "Exists", "effect": "NoSchedule"}]
        }
    }

minicluster = models.MiniCluster(
    api_version=f"{recipe.GROUP}/{recipe.VERSION}",
    kind="MiniCluster",
    metadata=V1ObjectMeta(name=name, namespace=namespace),
    spec=models.MiniClusterSpec(size=2, containers=[container], flux=flux, pod=pod),
)
result = {}
t0 = time.monotonic()
created = recipe.create(crd_api, recipe.manifest(minicluster, **extra))

pods = operator.wait_pods(size=2, name=name, quiet=True)
result["wait_pods"] = sorted(p.metadata.name for p in pods.items)
result["wait_pods_phases"] = sorted(p.status.phase for p in pods.items)
result["wait_pods_seconds"] = round(time.monotonic() - t0, 1)
broker = operator.get_broker_pod(name=name, quiet=True)
result["broker_pod"] = broker.metadata.name
# The SDK's MiniCluster class, loaded with what the API server returned on create (its own
# create() calls the SDK's create_minicluster, which fails).
handle = FluxBrokerMiniCluster()
result["load_pods"] = sorted(p.metadata.name for p in handle.load(created).items)
result["load_broker_pod"] = handle.broker_pod

if mode == "real":
    for attempt in range(120):
        # Until the broker's socket is there, flux proxy says so, and an exec may be refused
        # while the container starts: both are retried.
        try:
            listed = operator.kubectl_exec(
                ON_LEAD_BROKER + "flux resource list", pod=broker.metadata.name, quiet=True
            )
        except Exception as e:  # the kubernetes client raises several kinds here
            listed = f"{type(e).__name__}: {e}"
        free = [line.split() for line in listed.splitlines() if line.split()[:1] == ["free"]]
        if free and free[0][1] == "2":
            break
        time.sleep(2)
    result["resource_list"] = listed
    result["resource_list_seconds"] = round(time.monotonic() - t0, 1)
    result["execute"] = handle.execute("flux resource list", print_result=False)
    operator.kubectl_exec("touch /tmp/sdk-done", pod=broker.metadata.name, quiet=True)
    with tempfile.NamedTemporaryFile(suffix=".log") as out:
        lines = operator.stream_output(out.name, pod=broker.metadata.name, stdout=False)
        result["stream_output"] = lines
        with open(out.name) as written:
            result["stream_output_file"] = written.read()
    result["stream_output_seconds"] = round(time.monotonic() - t0, 1)

print(json.dumps(result))
