// Types for corpus.mjs, so the unit tests (TypeScript) can build the same cases as the benchmark.
export declare const APPLY_CLASSES: string[];
export declare const REFUSE_CLASSES: string[];
export declare const CLASSES: string[];
export type EditCase = {
  cls: string;
  source: string;
  content: string;
  oldText: string;
  newText: string;
  /** The exact file content a correct edit produces, or "refuse". */
  expected: string;
  kind?: string;
};
export declare function rng(seed: number): () => number;
export declare function sourceFiles(nodeModules: string): string[];
export declare function buildCases(
  files: string[],
  options?: { perClass?: number; seed?: number },
): EditCase[];
export declare function judge(c: EditCase, after: string | undefined): "correct" | "refused" | "wrong";
