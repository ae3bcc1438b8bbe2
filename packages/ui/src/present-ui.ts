import { defineTool, errorPayload, renderText, type Session, z } from "@toolbelt/core";
import {
  COMPONENTS,
  type ContainerNode,
  checkTreeLimits,
  countNodes,
  renderTreeText,
  UI_LIMITS,
  type UiNode,
  UiValidationError,
  validateTree,
} from "./components.js";

const uiPresentedPayload = z.object({
  kind: z.literal("ui_presented"),
  action: z
    .enum(["created", "appended", "updated"])
    .describe(
      "created: a new surface; appended: added into a container; updated: a container replaced by id",
    ),
  surface: z
    .string()
    .optional()
    .describe("the id of the surface's root, when it has one (later calls can address it)"),
  nodes: z.number().int(),
  text: z.string(),
});

export type UiPresentedPayload = z.output<typeof uiPresentedPayload>;

type Surfaces = {
  /** Surfaces by their root's id; surfaces without a root id cannot be addressed again and are not kept. */
  roots: Map<string, UiNode>;
  /** Container id → id of the surface holding it. */
  containers: Map<string, string>;
};

const UI_STATE = "ui.surfaces";

function surfaces(session: Session): Surfaces {
  return session.state<Surfaces>(UI_STATE, () => ({ roots: new Map(), containers: new Map() }));
}

function isContainer(node: UiNode): node is ContainerNode {
  return node.component === "Card" || node.component === "Stack";
}

function containerIds(node: UiNode, out: string[] = []): string[] {
  if (isContainer(node)) {
    if (node.id) out.push(node.id);
    for (const child of node.children ?? []) containerIds(child, out);
  }
  return out;
}

/** A copy of `tree` with the container `id` passed through `change`; the path of that container too. */
function rewrite(
  tree: UiNode,
  id: string,
  change: (node: ContainerNode) => UiNode,
  path = "surface",
): { tree: UiNode; path: string } | undefined {
  if (!isContainer(tree)) return undefined;
  if (tree.id === id) return { tree: change(tree), path };
  const children = tree.children ?? [];
  for (const [i, child] of children.entries()) {
    const hit = rewrite(child, id, change, `${path}.children[${i}]`);
    if (hit) {
      const next = [...children];
      next[i] = hit.tree;
      return { tree: { ...tree, children: next }, path: hit.path };
    }
  }
  return undefined;
}

/** Publishes a surface: checks its limits, re-indexes its containers, emits one generative_ui event. */
function publish(
  session: Session,
  state: Surfaces,
  tree: UiNode,
  previousRoot: string | undefined,
  path: string,
): { text: string; ids: string[] } {
  checkTreeLimits(tree, path);
  const ids = containerIds(tree);
  const rootId = isContainer(tree) ? tree.id : undefined;
  for (const id of ids) {
    const owner = state.containers.get(id);
    if (owner !== undefined && owner !== previousRoot)
      throw new UiValidationError(
        path,
        `container id ${JSON.stringify(id)} is already used by another surface`,
      );
  }
  if (previousRoot !== undefined) {
    state.roots.delete(previousRoot);
    for (const [id, owner] of [...state.containers]) if (owner === previousRoot) state.containers.delete(id);
  }
  if (rootId !== undefined) {
    state.roots.set(rootId, tree);
    for (const id of ids) state.containers.set(id, rootId);
  }
  const text = renderTreeText(tree);
  session.emit({ type: "generative_ui", tree, text });
  return { text, ids };
}

const DESCRIPTION = `Show the user a rich card built from a fixed vocabulary (a tree of fields, no markup):
Card{id?,title?,subtitle?,children?} Stack{id?,direction?:"vertical"|"horizontal",children?} Heading{text,level?:1|2|3} Paragraph{text} List{items:string[],ordered?} Table{columns:string[],rows:cell[][]} DefinitionList{items:[{term,value}]} Code{code,language?,title?} Link{url (http/https/mailto),text?} Badge{text,tone?:neutral|info|success|warning|danger} Progress{value,max?,label?}.
Every node has "component". Give a Card or Stack an "id" to change it later: pass {into:"id", tree} to append a node into it, or a tree whose root has that id to replace it.
Limits (refused, not trimmed): ${UI_LIMITS.nodes} nodes, depth ${UI_LIMITS.depth}, paragraph ${UI_LIMITS.paragraphChars} chars, code ${UI_LIMITS.codeChars}, table cell / definition value ${UI_LIMITS.cellChars}.`;

export const presentUi = defineTool({
  name: "present_ui",
  family: "ui",
  access: "interact",
  requires: { capability: "generative_ui" },
  description: DESCRIPTION,
  input: z.object({
    tree: z
      .looseObject({ component: z.string().describe(COMPONENTS.join(" | ")) })
      .nullish()
      .describe("the root node: {component, ...fields}"),
    tree_json: z
      .string()
      .nullish()
      .describe(
        "the same tree as JSON text, for callers whose schemas cannot carry open objects; give tree or tree_json",
      ),
    into: z.string().nullish().describe("id of a Card or Stack shown earlier to append this tree into"),
  }),
  output: uiPresentedPayload,
  execute(input, ctx) {
    const state = surfaces(ctx.session);
    // OpenAI's strict schemas close every object, so a tree may also arrive as JSON text.
    let raw: unknown = input.tree;
    if (input.tree_json !== undefined && input.tree_json !== null) {
      if (raw !== undefined && raw !== null)
        return errorPayload("EINVAL_INPUT", "give tree or tree_json, not both", { field: "tree_json" });
      try {
        raw = JSON.parse(input.tree_json);
      } catch (error) {
        return errorPayload("EINVAL_INPUT", `tree_json is not JSON: ${(error as Error).message}`, {
          field: "tree_json",
        });
      }
    }
    if (raw === undefined || raw === null)
      return errorPayload("EINVAL_INPUT", "give the tree to show in tree (or tree_json)", { field: "tree" });
    try {
      const tree = validateTree(raw, "tree");
      if (input.into !== undefined && input.into !== null) {
        const owner = state.containers.get(input.into);
        const root = owner === undefined ? undefined : state.roots.get(owner);
        if (owner === undefined || root === undefined) {
          return errorPayload(
            "EINVAL_INPUT",
            `into: no Card or Stack with id ${JSON.stringify(input.into)} was shown; known ids: ${[...state.containers.keys()].join(", ") || "(none)"}`,
            { field: "into" },
          );
        }
        const hit = rewrite(root, input.into, (c) => ({ ...c, children: [...(c.children ?? []), tree] }));
        if (!hit) return errorPayload("EINTERNAL", `container ${input.into} vanished from its surface`);
        const { text } = publish(ctx.session, state, hit.tree, owner, "surface");
        return done("appended", hit.tree, text);
      }
      const rootId = isContainer(tree) ? tree.id : undefined;
      const owner = rootId === undefined ? undefined : state.containers.get(rootId);
      const ownerRoot = owner === undefined ? undefined : state.roots.get(owner);
      if (rootId !== undefined && owner !== undefined && ownerRoot !== undefined) {
        const hit = rewrite(ownerRoot, rootId, () => tree);
        if (!hit) return errorPayload("EINTERNAL", `container ${rootId} vanished from its surface`);
        const { text } = publish(ctx.session, state, hit.tree, owner, "surface");
        return done("updated", hit.tree, text);
      }
      const { text } = publish(ctx.session, state, tree, undefined, "tree");
      return done("created", tree, text);
    } catch (error) {
      if (error instanceof UiValidationError)
        return errorPayload("EINVAL_INPUT", error.message, { field: error.path, path: error.path });
      throw error;
    }
  },
  render(payload) {
    return renderText(
      [
        ["Kind", payload.kind],
        ["Action", payload.action],
        ["Surface", payload.surface],
        ["Nodes", payload.nodes],
      ],
      payload.text,
    );
  },
});

function done(action: UiPresentedPayload["action"], tree: UiNode, text: string): UiPresentedPayload {
  const surface = isContainer(tree) ? tree.id : undefined;
  return { kind: "ui_presented", action, ...(surface ? { surface } : {}), nodes: countNodes(tree), text };
}
