import type { z } from 'zod';

/** True when A and B are each assignable to the other. */
type Assignable<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;

/** Every key of every member of a union (an optional field the other side lacks still counts). */
type KeysOf<T> = T extends unknown ? keyof T : never;

/** Mutually assignable, with the same keys: assignability alone lets either side have an extra optional field. */
type Same<A, B> = Assignable<A, B> extends true ? Assignable<KeysOf<A>, KeysOf<B>> : false;

/**
 * A response schema tied to the TypeScript type its view returns: `describes<View>()(schema)`
 * compiles only while the schema's output type and View are the same, so a field added to,
 * removed from or retyped in the view breaks the build until the document says so too. (On a
 * mismatch tsc reports "Expected 2 arguments": the missing one is this proof.)
 */
export function describes<View>() {
  return <S extends z.ZodType>(schema: S, ..._proof: Same<z.output<S>, View> extends true ? [] : [mismatch: never]): S => schema;
}

/**
 * For a loose schema (one that also describes what an upstream sends): compiles only while every
 * value of View is a value of the schema's output type.
 */
export function admits<View>() {
  return <S extends z.ZodType>(schema: S, ..._proof: [View] extends [z.output<S>] ? [] : [mismatch: never]): S => schema;
}
