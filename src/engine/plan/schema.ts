// The output schema of each plan node, derived (never stored) so that a plan cannot disagree with itself.

import type { Schema } from '../batch.js';
import { columnIndices, requireDistinct, UsageError } from '../errors.js';
import { aggregateOutputSchema } from '../ops/aggregate/index.js';
import { joinOutputSchema } from '../ops/join/index.js';
import type { PlanNode } from './nodes.js';
import { generatedSchema } from '../ml/generate.js';
import { modelOf, predictionFields } from '../ml/predict-columns.js';

export function schemaOf(node: PlanNode): Schema {
  switch (node.kind) {
    case 'scan':
      return node.columns === null ? node.schema : pick(node.schema, node.columns);
    case 'project':
      return pick(schemaOf(node.input), node.columns);
    case 'aggregate':
    case 'final-aggregate':
      return aggregateOutputSchema(schemaOf(node.input), node.spec);
    case 'partial-aggregate':
      // A partial aggregate yields partial states, not rows; its "schema" is its input's for explain purposes.
      return schemaOf(node.input);
    case 'join':
      return joinOutputSchema(schemaOf(node.left), schemaOf(node.right), node.spec);
    case 'generate': {
      const all = generatedSchema(node.generator, node.params);
      return node.columns === null ? all : pick(all, node.columns);
    }
    case 'predict': {
      const input = schemaOf(node.input);
      if (node.keep !== null) requireDistinct(node.keep, 'column', '--keep');
      const kept = node.keep === null ? input : pick(input, node.keep);
      const added = predictionFields(modelOf(node), node.outputName, node.proba);
      // Two columns of one name would make a file that no reader (gpuframe included) takes back.
      const keptNames = new Set(kept.map((k) => k.name));
      const clash = added.find((f) => keptNames.has(f.name));
      if (clash) throw new UsageError(`the input already has a column '${clash.name}', which the predictions add: leave it out with --keep`);
      return [...kept, ...added];
    }
  }
}

export function pick(schema: Schema, columns: readonly string[]): Schema {
  return columnIndices(schema.map((f) => f.name), columns).map((i) => schema[i]);
}
