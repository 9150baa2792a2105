/** `kubeglue tools`: the tools the API key may see. */
import * as routes from '../../../contract/api/route-paths.ts';
import { ToolListAnswer } from '../answers.ts';
import { ApiClient } from '../client.ts';
import { command, EXIT } from '../command.ts';
import { clip, printList, shortTime } from '../output.ts';

export const tools = command({
  name: 'tools',
  summary: 'list tools',
  positionals: [],
  options: {
    archived: { type: 'boolean', help: 'include archived tools' },
  },
  about: [
    'Lists the tools the API key may see: id, number of steps, last change and what the tool does (its',
    'instruction). --output json prints them as a JSON array of tools.',
  ],
  examples: ['kubeglue tools', 'kubeglue tools --output json'],
  async run({ values, output, io }) {
    const client = new ApiClient(await io.connect(), io);
    const found = await client.allPages(routes.listTools, ToolListAnswer, {
      query: { includeArchived: values.archived ? 'true' : undefined },
    });
    printList(io, output, found, {
      plural: 'tools',
      headers: ['TOOL', 'STEPS', 'UPDATED', 'INSTRUCTION'],
      row: (tool) => [
        tool.archived ? `${tool.id} (archived)` : tool.id,
        String(tool.steps.length),
        shortTime(tool.updatedAt),
        clip(tool.instruction ?? tool.name, 60),
      ],
    });
    return EXIT.ok;
  },
});
