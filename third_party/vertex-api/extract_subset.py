#!/usr/bin/env python3
"""Writes aiplatform.v1.custom-training.subset.json from the full aiplatform v1 discovery document.

    python3 third_party/vertex-api/extract_subset.py /work/shared/vertex-api/aiplatform.v1.discovery.json \
        > third_party/vertex-api/aiplatform.v1.custom-training.subset.json

The subset keeps the top-level discovery metadata, the methods listed in METHODS below (verbatim, with
their parameters and descriptions) and the transitive $ref closure of their request and response schemas
plus ROOTS (schemas that methods return inside an Any, such as operation metadata). vto-emulator
validates request bodies against it (emulator/schema_validator.h). Keys are written in the order of the
original extraction, so re-running this script on the same discovery document gives the same bytes.
"""
import json
import sys

# Resource path under projects.locations -> the methods kept (None: every method, and every sub-resource).
METHODS = {
    'customJobs': None,
    'hyperparameterTuningJobs': None,
    'operations': None,
    # Model Registry: the methods vto-emulator serves.
    'models': {
        'methods': ['upload', 'get', 'listVersions', 'mergeVersionAliases'],
        'resources': {
            'evaluations': {'methods': ['import', 'list', 'get']},
            'operations': {'methods': ['get']},
        },
    },
}
ROOTS = [
    'GoogleCloudAiplatformV1DeleteOperationMetadata',
    'GoogleCloudAiplatformV1GenericOperationMetadata',
    'GoogleCloudAiplatformV1UploadModelOperationMetadata',
    'GoogleCloudAiplatformV1UploadModelResponse',
]


def select(resource, wanted):
    """The resource with only the wanted methods and sub-resources (all of them when wanted is None)."""
    if wanted is None:
        return resource
    kept = {}
    if 'methods' in wanted:
        kept['methods'] = {name: resource['methods'][name] for name in wanted['methods']}
    if 'resources' in wanted:
        kept['resources'] = {name: select(resource['resources'][name], inner)
                             for name, inner in wanted['resources'].items()}
    return kept


def refs(value, found):
    if isinstance(value, dict):
        for key, inner in value.items():
            if key == '$ref':
                found.append(inner)
            else:
                refs(inner, found)
    elif isinstance(value, list):
        for inner in value:
            refs(inner, found)


def main(path):
    with open(path, encoding='utf-8') as source:
        full = json.load(source)
    locations = full['resources']['projects']['resources']['locations']['resources']
    resources = {'projects': {'resources': {'locations': {'resources': {
        name: select(locations[name], wanted) for name, wanted in METHODS.items()}}}}}
    pending = list(ROOTS)
    refs(resources, pending)
    schemas = {}
    while pending:
        schema_id = pending.pop()
        if schema_id in schemas:
            continue
        schemas[schema_id] = full['schemas'][schema_id]
        refs(schemas[schema_id], pending)

    subset = {key: full[key] for key in sorted(full) if key not in ('resources', 'schemas')}
    subset['resources'] = json.loads(json.dumps(resources, sort_keys=True))
    subset['schemas'] = json.loads(json.dumps(schemas, sort_keys=True))
    subset['x-extract-note'] = (
        'Subset of discovery document %s (revision %s); schemas are the transitive $ref closure of the listed '
        'roots and the methods of %s. Roots not present in the source: none'
        % (full['id'], full['revision'], ', '.join('projects.locations.' + name for name in METHODS)))
    sys.stdout.write(json.dumps(subset, indent=2, ensure_ascii=False) + '\n')


if __name__ == '__main__':
    if len(sys.argv) != 2:
        sys.exit('usage: extract_subset.py PATH/aiplatform.v1.discovery.json > aiplatform.v1.custom-training.subset.json')
    main(sys.argv[1])
