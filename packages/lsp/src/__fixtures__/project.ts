import { mkdtempSync, mkdirSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";

/** A small TypeScript project with two known errors in src/main.ts (lines 9 and 10). */
export const FILES: Record<string, string> = {
  "tsconfig.json": JSON.stringify(
    {
      compilerOptions: {
        strict: true,
        target: "ES2022",
        module: "NodeNext",
        moduleResolution: "NodeNext",
        noEmit: true,
        skipLibCheck: true,
        types: [],
      },
      include: ["src"],
    },
    null,
    2,
  ),
  "src/shapes.ts": `export interface Shape {
  area(): number;
}

export class Circle implements Shape {
  constructor(private readonly radius: number) {}
  area(): number {
    return Math.PI * this.radius * this.radius;
  }
}

export class Square implements Shape {
  constructor(private readonly side: number) {}
  area(): number {
    return this.side * this.side;
  }
}

export function totalArea(shapes: Shape[]): number {
  return shapes.reduce((sum, s) => sum + s.area(), 0);
}
`,
  "src/main.ts": `import { Circle, Square, totalArea } from "./shapes.js";

export function report(): string {
  const shapes = [new Circle(1), new Square(2)];
  return \`total: \${totalArea(shapes)}\`;
}

export function broken(): number {
  const label: number = "not a number";
  return label + missingName;
}
`,
  "src/clean.ts": `export const answer = 42;
`,
};

/** The project plus a file with several kinds of error, for comparing backends. */
export const MORE_FILES: Record<string, string> = {
  ...FILES,
  "src/more.ts": `import { Circle } from "./shapes.js";
export function unused(a: string, b: number) {
  const c: boolean = a;
  if (b = 2) {}
  return new Circle("x") + undefinedThing;
}
export const convert: (x: number) => string = (x: string) => x;
`,
};

export function makeProject(files: Record<string, string> = FILES): { root: string; cleanup: () => void } {
  const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), "toolbelt-lsp-")));
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    writeFileSync(path.join(root, rel), text);
  }
  return { root, cleanup: () => rmSync(root, { recursive: true, force: true }) };
}
