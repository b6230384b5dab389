"""
Creating and deleting a MiniCluster with the Go Flux Operator's Python SDK (fluxoperator 0.2.0)
around its defects; docs/migrating-from-go.md ("The Python SDK") shows the same recipe.

- The SDK's models serialize with the SDK's own ApiClient (camelCase field names); the kubernetes
  client's sanitizer would write the Python attribute names.
- The body is a dict: the current kubernetes client refuses a model object.
- Fields the SDK's models lack (pod tolerations, ...) are merged into that dict.
- The CustomObjectsApi is always passed on: the SDK's own create and delete otherwise build one
  from ~/.kube/config, whatever the caller configured.
"""

from fluxoperator.api_client import ApiClient

GROUP = "flux-framework.org"
VERSION = "v1alpha2"
PLURAL = "miniclusters"


def merged(into, extra):
    """`extra` merged into the dict `into`, recursively for dicts (other values replace)."""
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            merged(into[key], value)
        else:
            into[key] = value
    return into


def manifest(minicluster, **extra_spec):
    """The MiniCluster model as the dict the API takes, with spec fields the models lack."""
    body = ApiClient().sanitize_for_serialization(minicluster)
    merged(body["spec"], extra_spec)
    return body


def create(crd_api, body, **kwargs):
    return crd_api.create_namespaced_custom_object(
        group=GROUP,
        version=VERSION,
        namespace=body["metadata"]["namespace"],
        plural=PLURAL,
        body=body,
        **kwargs,
    )
