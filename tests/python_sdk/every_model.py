"""
A MiniCluster made of every model of fluxoperator 0.2.0 that MiniClusterSpec reaches, each at its
defaults, created through the recipe with strict field validation, read back and deleted; and the
SDK's own create and delete, which fail. Usage: every_model.py NAMESPACE KUBECONFIG

The client is configured from the KUBECONFIG argument, as a program that keeps its kubeconfig
somewhere other than the default place does: the environment variable is dropped before the
kubernetes package reads it.

Prints one JSON line: what was sent, what the API server stored, and each defect's error.
"""

import json
import os
import sys

os.environ.pop("KUBECONFIG", None)

import fluxoperator.models as models  # noqa: E402
from fluxoperator.client import FluxOperator  # noqa: E402
from fluxoperator.resource.pods import create_minicluster, delete_minicluster  # noqa: E402
from kubernetes import client, config  # noqa: E402
from kubernetes.client import V1ObjectMeta  # noqa: E402

import recipe  # noqa: E402

namespace, kubeconfig = sys.argv[1], sys.argv[2]
config.load_kube_config(config_file=kubeconfig)
crd_api = client.CustomObjectsApi()


def container(**kwargs):
    """A container with every nested model at its defaults."""
    return models.MiniClusterContainer(
        commands=models.Commands(),
        life_cycle=models.LifeCycle(),
        resources=models.ContainerResources(),
        security_context=models.SecurityContext(),
        volumes={"data": models.ContainerVolume()},
        **kwargs,
    )


minicluster = models.MiniCluster(
    api_version=f"{recipe.GROUP}/{recipe.VERSION}",
    kind="MiniCluster",
    metadata=V1ObjectMeta(name="every-model", namespace=namespace),
    spec=models.MiniClusterSpec(
        archive=models.MiniClusterArchive(),
        containers=[container()],
        flux=models.FluxSpec(
            # The API requires names (DNS labels), an address and a size here.
            bursting=models.Bursting(
                clusters=[models.BurstedCluster(name="burst")],
                lead_broker=models.FluxBroker(address="lead.example.org", name="lead", size=1),
            ),
            container=models.FluxContainer(resources=models.ContainerResources()),
            scheduler=models.FluxScheduler(),
        ),
        logging=models.LoggingSpec(),
        network=models.Network(),
        pod=models.PodSpec(),
        # A service container needs a name.
        services=[container(name="sidecar")],
    ),
)


def error_of(fn):
    try:
        fn()
    except Exception as e:  # the SDK's defects raise many kinds
        return f"{type(e).__name__}: {e}"
    return None


result = {"defects": {}}
result["defects"]["create_minicluster"] = error_of(
    lambda: create_minicluster(
        name="sdk-create",
        namespace=namespace,
        container={"image": "ghcr.io/rse-ops/accounting:app-latest"},
        crd_api=crd_api,
    )
)
result["defects"]["create_minicluster_with_flux"] = error_of(
    lambda: create_minicluster(
        name="sdk-create",
        namespace=namespace,
        container={"image": "ghcr.io/rse-ops/accounting:app-latest"},
        flux={},
        crd_api=crd_api,
    )
)
result["defects"]["model_as_body"] = error_of(
    lambda: crd_api.create_namespaced_custom_object(
        group=recipe.GROUP,
        version=recipe.VERSION,
        namespace=namespace,
        plural=recipe.PLURAL,
        body=minicluster,
    )
)

body = recipe.manifest(minicluster)
result["sent"] = body
result["stored"] = recipe.create(crd_api, body, field_validation="Strict")

result["defects"]["delete_without_crd_api"] = error_of(
    lambda: delete_minicluster("every-model", namespace)
)
operator = FluxOperator(namespace=namespace)
operator.delete_minicluster(name="every-model", crd_api=crd_api)
result["deleted"] = True
print(json.dumps(result))
