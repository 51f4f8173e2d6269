(* The judge plugin's (forall_judge.mlg) view of the Coq 8.16 API; toolchain.py picks this file by version. *)
let proj c = match Constr.kind c with Constr.Proj (p, c) -> (p, c) | _ -> assert false
let case_return r = r
let cumulative_sprop (f : Declarations.typing_flags) = f.Declarations.cumulative_sprop
let abstract_size a = string_of_int (Univ.AbstractContext.size a)
let assumptions st gr c = Assumptions.assumptions ~add_opaque:false ~add_transparent:false st gr c
(* 8.16 has no other constructors: these are never reached *)
let other_term (_ : Constr.t) : string = CErrors.user_err (Pp.str "forall-judge: unsupported term")
let other_relevance (_ : Sorts.relevance) : string = CErrors.user_err (Pp.str "forall-judge: unsupported relevance")
let other_sort (_ : Sorts.t) : string = CErrors.user_err (Pp.str "forall-judge: unsupported sort")
let other_body _ : string = CErrors.user_err (Pp.str "forall-judge: unsupported constant body")
let ntypes (mb : Declarations.mutual_inductive_body) = mb.Declarations.mind_ntypes
let record_kind (mb : Declarations.mutual_inductive_body) = match mb.Declarations.mind_record with
  | Declarations.NotRecord -> "norec" | Declarations.FakeRecord -> "fakerec" | Declarations.PrimRecord _ -> "primrec"
let arity_kind _ (p : Declarations.one_inductive_body) = match p.Declarations.mind_arity with
  | Declarations.RegularArity _ -> " regular" | Declarations.TemplateArity _ -> " template"
let instance_levels u = Univ.Instance.to_array u
(* the inductive a recursive position is a value of: the block's own (Mrec) or a nested one (list in list rose) *)
let recarg_inductive (r : Declarations.recarg) = match r with
  | Declarations.Mrec i | Declarations.Nested (Declarations.NestedInd i) -> Some i | _ -> None
(* A file's module structure for ForallJudgeFile (project mode), whatever the version's module API. *)
type kfield = KConst | KMind | KModule of (Names.Label.t * kfield) list option | KModType | KOther
let rec fields_of (s : Declarations.structure_body) = List.map (fun (l, f) -> (l, kfield f)) s
and kfield (f : Declarations.structure_field_body) = match f with
  | Declarations.SFBconst _ -> KConst
  | Declarations.SFBmind _ -> KMind
  | Declarations.SFBmodule mb -> (match mb.Declarations.mod_type with
      | Declarations.NoFunctor s -> KModule (Some (fields_of s))
      | Declarations.MoreFunctor _ -> KModule (None))
  | Declarations.SFBmodtype _ -> KModType
let file_structure env mp = match (try Some (Environ.lookup_module mp env) with Not_found -> None) with
  | Some mb -> (match mb.Declarations.mod_type with Declarations.NoFunctor s -> Some (fields_of s) | _ -> None)
  | None -> None
(* How a module of the file is implemented, for the judge's module walk (forall_judge.mlg, module_findings): "" for
   a plain [Module M. ... End M.], else what it is (sealed, algebraic: an alias or a functor application, declared). *)
let module_impl env mp = match (try Some (Environ.lookup_module mp env) with Not_found -> None) with
  | None -> "an unreadable module"
  | Some mb -> (match mb.Declarations.mod_expr with
      | Declarations.FullStruct -> ""
      | Declarations.Struct _ -> "a module sealed by a signature (module subtyping)"
      | Declarations.Algebraic _ -> "a module alias or functor application"
      | Declarations.Abstract -> "a declared module (Declare Module)")
(* The delta resolver of a module of the file (its names' canonical names: an included or aliased field's canonical
   name is elsewhere), for the module walk; None when the module cannot be read. *)
let module_delta env mp = match (try Some (Environ.lookup_module mp env) with Not_found -> None) with
  | None -> None
  | Some mb -> Some (mb.Declarations.mod_delta)
(* Project mode's shared walk (forall_judge.mlg, shared_assumptions): Coq's Print Assumptions traversal of many
   constants at once — every object reached, with the objects its body (an inductive's declaration) mentions —
   and Coq's assumptions of them all together. The roots are one term applying Prop to them (only walked). *)
let roots_term cs = Constr.mkApp (Constr.mkProp, Array.of_list (List.map Constr.mkConst cs))
let roots_label = Names.Label.make "forall_judge_roots"
let closure_graph cs = let (_, g, _) = Assumptions.traverse roots_label (roots_term cs) in g
let assumptions_of st cs =
  Assumptions.assumptions ~add_opaque:false ~add_transparent:false st (Names.GlobRef.ConstRef (List.hd cs)) (roots_term cs)
(* A universe-polymorphic constant's own context (its bound levels Var 0..n-1 and their constraints) pushed on the
   environment's graph, so the relations between its levels are decided by the kernel's graph. *)
let push_universes (u : Declarations.universes) env = match u with
  | Declarations.Monomorphic -> env
  | Declarations.Polymorphic a -> Environ.push_context ~strict:false (Univ.AbstractContext.repr a) env
